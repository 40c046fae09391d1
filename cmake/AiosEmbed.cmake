# Files built into a library as byte arrays, so a daemon serves them with nothing to install or
# download. aios_embed(<target> <namespace> <header> <dir> <file>...) generates a source that
# defines <namespace>::embedded_files() (declared in <header>) over the files, named relative to
# <dir>, and adds it to <target>; a changed file regenerates it.
set(AIOS_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/AiosEmbedFiles.cmake")

function(aios_embed target namespace header dir)
  set(output "${CMAKE_CURRENT_BINARY_DIR}/${target}_embedded.cpp")
  set(inputs "")
  foreach(name ${ARGN})
    list(APPEND inputs "${dir}/${name}")
  endforeach()
  string(REPLACE ";" "," names "${ARGN}")
  add_custom_command(OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${output}" "-DNAMESPACE=${namespace}"
      "-DHEADER=${header}" "-DDIR=${dir}" "-DNAMES=${names}" -P "${AIOS_EMBED_SCRIPT}"
    DEPENDS ${inputs} "${AIOS_EMBED_SCRIPT}"
    COMMENT "Embedding ${names}"
    VERBATIM)
  target_sources(${target} PRIVATE "${output}")
  set_source_files_properties("${output}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
