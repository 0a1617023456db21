# The libFuzzer target of the SFTP packet parser (tests/fuzz/sftp_packet_fuzz.cpp).
# Needs clang, so it lives in its own build:
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
#         -DWEFT_BUILD_FUZZ=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF
#   ninja -C build-fuzz sftp_packet_fuzz
#   build-fuzz/sftp_packet_fuzz -max_total_time=600 CORPUS_DIR
# ctest in that build runs a bounded smoke run (fuzz.sftp_packet); CI runs
# it that way, long runs are done by hand.
target_compile_options(weft_sftp_packet PRIVATE ${WEFT_FUZZ_FLAGS} -fsanitize=fuzzer-no-link)
add_executable(sftp_packet_fuzz ${CMAKE_CURRENT_LIST_DIR}/sftp_packet_fuzz.cpp)
target_compile_options(sftp_packet_fuzz PRIVATE ${WEFT_FUZZ_FLAGS} -fsanitize=fuzzer-no-link)
target_link_options(sftp_packet_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(sftp_packet_fuzz PRIVATE weft_sftp_packet)
enable_testing()
add_test(NAME fuzz.sftp_packet COMMAND sftp_packet_fuzz -runs=300000 -max_len=2048)
set_tests_properties(fuzz.sftp_packet PROPERTIES TIMEOUT 300)
