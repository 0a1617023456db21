# The SMB decoders' libFuzzer target (tests/fuzz/smb_fuzz.cpp). Built only in
# a clang build with WEFT_BUILD_FUZZ=ON, for example:
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DWEFT_BUILD_FUZZ=ON
#   ninja -C build-fuzz smb_fuzz && build-fuzz/tests/smb_fuzz -max_total_time=600
# It compiles the pure decoders of protocols/smb itself (no namespace, no
# Asio), so the fuzz build stays small. ctest runs a bounded smoke run.
add_executable(smb_fuzz
  ${CMAKE_CURRENT_LIST_DIR}/smb_fuzz.cpp
  ${PROJECT_SOURCE_DIR}/protocols/smb/crypto.cpp
  ${PROJECT_SOURCE_DIR}/protocols/smb/ntlm.cpp
  ${PROJECT_SOURCE_DIR}/protocols/smb/spnego.cpp
  ${PROJECT_SOURCE_DIR}/protocols/smb/wire.cpp)
target_include_directories(smb_fuzz PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(smb_fuzz PRIVATE ${WEFT_FUZZ_FLAGS} -fsanitize=fuzzer -g -O1)
target_link_options(smb_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(smb_fuzz PRIVATE OpenSSL::Crypto)
add_test(NAME fuzz.smb COMMAND smb_fuzz -runs=200000 -max_len=4096)
set_tests_properties(fuzz.smb PROPERTIES TIMEOUT 300)
