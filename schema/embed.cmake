# Embeds every schema/*.json into one generated C file as
#   const char fl_schema_<name>[] = "...";   (NUL-terminated)
# so the binaries carry the wire contract and nothing restates it by hand.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/embed.cmake)
function(fleet_embed_schemas out)
  file(GLOB jsons CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/schema/*.json)
  set(pairs)
  foreach(f ${jsons})
    get_filename_component(n ${f} NAME_WE)
    string(REPLACE "-" "_" n ${n})
    list(APPEND pairs fl_schema_${n} ${f})
  endforeach()
  fleet_embed(${out} ${pairs})
endfunction()
