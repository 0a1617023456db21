# The NFS front end's record marking, RPC headers, AUTH_SYS and NFSv3
# argument decoding, and file handles.
add_executable(nfs_rpc_fuzz
  nfs_rpc_fuzz.cpp
  ${PROJECT_SOURCE_DIR}/protocols/nfs/rpc.cpp
  ${PROJECT_SOURCE_DIR}/protocols/nfs/nfs3_args.cpp
  ${PROJECT_SOURCE_DIR}/protocols/nfs/handles.cpp
  ${PROJECT_SOURCE_DIR}/gateway/ns/errc.cpp)
target_include_directories(nfs_rpc_fuzz PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(nfs_rpc_fuzz PRIVATE ${WEFT_FUZZ_FLAGS} -fsanitize=fuzzer)
target_link_options(nfs_rpc_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(nfs_rpc_fuzz PRIVATE OpenSSL::Crypto Boost::headers)
add_test(NAME fuzz.nfs_rpc COMMAND nfs_rpc_fuzz -runs=200000 -max_len=70000 -seed=1)
set_tests_properties(fuzz.nfs_rpc PROPERTIES TIMEOUT 300)
