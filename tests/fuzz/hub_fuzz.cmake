# The hub wire codec's frame decoder (tests/fuzz/hub_frames_fuzz.cpp), run
# over its seed corpus in corpus/hub_frames. New inputs go to the first
# corpus directory (in the build tree); the seeds in the source tree are only
# read.
foreach(target hub_frames)
  add_executable(fuzz_${target} ${target}_fuzz.cpp)
  target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer,address)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/corpus/${target})
  add_test(NAME fuzz.${target}
    COMMAND fuzz_${target} -runs=300000 -max_len=70000 -seed=1
            ${CMAKE_CURRENT_BINARY_DIR}/corpus/${target} ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${target})
  set_tests_properties(fuzz.${target} PROPERTIES TIMEOUT 170)
endforeach()
target_link_libraries(fuzz_hub_frames PRIVATE weft_hub_wire nlohmann_json::nlohmann_json)
