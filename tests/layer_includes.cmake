# ctest Layers.PublicLayersCannotIncludeTheInternals (cmake -P): the include
# path of tools/ and utilities/ does not reach engine/, snapshot/,
# partitions/, publish/ or sink/.
# For each such target (the tool, the Kafka utility, the public utilities),
# the compile command of one of its files or of its batches (a unity build,
# from compile_commands.json) compiles small probes with -fsyntax-only: one that
# includes the public API and utilities/ must compile (so that a command
# this script garbled cannot pass for a refusal), and each internal include
# must fail with "No such file".
#   -DCOMPILE_COMMANDS=<build>/compile_commands.json -DPROBE_DIR=<scratch dir>
cmake_minimum_required(VERSION 3.20)

set(TARGETS snapsink snapsink_kafka snapsink_public_utilities)
set(INTERNAL_HEADERS engine/root.h publish/generation_reader.h sink/sink_impl.h snapshot/snapshot_file.h partitions/partition_seals.h)

file(READ "${COMPILE_COMMANDS}" json)
string(JSON entries LENGTH "${json}")
math(EXPR last "${entries} - 1")
file(MAKE_DIRECTORY "${PROBE_DIR}")
file(WRITE "${PROBE_DIR}/public.cc"
     "#include \"snapsink/sink.h\"\n#include \"snapsink/utilities/serve.h\"\n#include \"utilities/serve/http_request.h\"\nint main() { return 0; }\n")

# Runs `command` with the compiled file replaced by `probe`; sets out_rc, out_text.
function(compile_probe command dir probe out_rc out_text)
  string(REGEX REPLACE " -o [^ ]+ -c [^ ]+$" " -fsyntax-only ${probe}" probe_command "${command}")
  if(probe_command STREQUAL command)
    message(FATAL_ERROR "unexpected compile command shape: ${command}")
  endif()
  execute_process(COMMAND sh -c "${probe_command}" WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_text} "${out}" PARENT_SCOPE)
endfunction()

set(failures "")
foreach(target ${TARGETS})
  set(found FALSE)
  foreach(i RANGE ${last})
    string(JSON command GET "${json}" ${i} command)
    if(NOT command MATCHES " -o CMakeFiles/${target}[.]dir/[^ ]+ -c [^ ]+$")
      continue()
    endif()
    set(found TRUE)
    string(JSON dir GET "${json}" ${i} directory)
    compile_probe("${command}" "${dir}" "${PROBE_DIR}/public.cc" rc out)
    if(NOT rc EQUAL 0)
      string(APPEND failures "${target}: the public probe did not compile:\n${out}\n")
    endif()
    foreach(header ${INTERNAL_HEADERS})
      string(MAKE_C_IDENTIFIER "${header}" name)
      file(WRITE "${PROBE_DIR}/${name}.cc" "#include \"${header}\"\n")
      compile_probe("${command}" "${dir}" "${PROBE_DIR}/${name}.cc" rc out)
      # Not found, as GCC says it ("engine/root.h: No such file") or Clang
      # ("'engine/root.h' file not found"): the one acceptable failure.
      if(rc EQUAL 0)
        string(APPEND failures "${target}: its include path reaches ${header}\n")
      elseif(NOT out MATCHES "${header}: No such file" AND NOT out MATCHES "'${header}' file not found")
        string(APPEND failures "${target}: ${header} failed for another reason:\n${out}\n")
      endif()
    endforeach()
    break()
  endforeach()
  if(NOT found)
    string(APPEND failures "${target}: not in ${COMPILE_COMMANDS}\n")
  endif()
endforeach()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "tools/ and utilities/ reach neither engine/, snapshot/, partitions/, publish/ nor sink/")
