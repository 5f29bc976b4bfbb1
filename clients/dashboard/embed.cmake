# Embeds clients/dashboard/index.html (the page, its CSS and JS inline) into
# one generated C file as
#   const char fl_dashboard_html[];   (NUL-terminated)
# so fleetd serves its dashboard with nothing to install or download.
function(fleet_embed_dashboard out)
  set(f ${CMAKE_CURRENT_SOURCE_DIR}/clients/dashboard/index.html)
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  set(body "/* Generated from clients/dashboard/index.html by clients/dashboard/embed.cmake. Do not edit. */\n")
  string(APPEND body "const char fl_dashboard_html[] = {${hex}0x00};\n")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
  file(WRITE ${out}.tmp "${body}")
  configure_file(${out}.tmp ${out} COPYONLY)
endfunction()
