# Files built into a library as byte arrays, so a daemon serves or runs them with nothing to
# install or download. Each generates a source that defines <namespace>::embedded_files()
# (declared in <header>) over the files, and adds it to <target>; a changed file regenerates it.
#   aios_embed(<target> <namespace> <header> <dir> <file>...)   files named relative to <dir>
#   aios_embed_program(<target> <namespace> <header> <executable target>)   the built program
set(AIOS_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/AiosEmbedFiles.cmake")

function(aios_embed_generate target namespace header dir names depends)
  string(REPLACE "::" "_" stem "${namespace}")
  set(output "${CMAKE_CURRENT_BINARY_DIR}/${target}_${stem}_embedded.cpp")
  add_custom_command(OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${output}" "-DNAMESPACE=${namespace}"
      "-DHEADER=${header}" "-DDIR=${dir}" "-DNAMES=${names}" -P "${AIOS_EMBED_SCRIPT}"
    DEPENDS ${depends} "${AIOS_EMBED_SCRIPT}"
    COMMENT "Embedding ${names}"
    VERBATIM)
  target_sources(${target} PRIVATE "${output}")
  set_source_files_properties("${output}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

function(aios_embed target namespace header dir)
  set(inputs "")
  foreach(name ${ARGN})
    list(APPEND inputs "${dir}/${name}")
  endforeach()
  string(REPLACE ";" "," names "${ARGN}")
  aios_embed_generate(${target} ${namespace} ${header} "${dir}" "${names}" "${inputs}")
endfunction()

function(aios_embed_program target namespace header program)
  aios_embed_generate(${target} ${namespace} ${header} "$<TARGET_FILE_DIR:${program}>"
    "$<TARGET_FILE_NAME:${program}>" "${program}")
endfunction()
