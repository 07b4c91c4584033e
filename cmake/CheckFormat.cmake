# Fails when a C++ source of the project drifts from the committed .clang-format.
# Usage: cmake -DSOURCE_DIR=<repository root> -DCLANG_FORMAT=<clang-format> -P CheckFormat.cmake
# Mend a failure with: clang-format -i <the files listed>
file(GLOB_RECURSE files
  "${SOURCE_DIR}/core/*.h" "${SOURCE_DIR}/core/*.cpp"
  "${SOURCE_DIR}/app/*.h" "${SOURCE_DIR}/app/*.cpp"
  "${SOURCE_DIR}/widgets/*.h" "${SOURCE_DIR}/widgets/*.cpp"
  "${SOURCE_DIR}/tests/*.h" "${SOURCE_DIR}/tests/*.cpp")
set(drifted "")
foreach(f IN LISTS files)
  execute_process(COMMAND "${CLANG_FORMAT}" --dry-run -Werror --style=file "${f}"
                  WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    list(APPEND drifted "${rel}")
  endif()
endforeach()
list(LENGTH files n)
if(drifted)
  list(LENGTH drifted k)
  list(JOIN drifted "\n  " text)
  message(FATAL_ERROR "${k} of ${n} sources drift from .clang-format (mend with clang-format -i):\n  ${text}")
endif()
message(STATUS "all ${n} sources follow .clang-format")
