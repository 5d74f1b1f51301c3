# apps/vavae: its code is a library too, so tests/vavae can link it. Included
# from apps/CMakeLists.txt; paths are taken from this file's folder.
file(GLOB_RECURSE VAVAE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
list(FILTER VAVAE_SOURCES EXCLUDE REGEX "/vavae/main\\.cpp$")
add_library(vavae_lib STATIC ${VAVAE_SOURCES})
target_include_directories(vavae_lib PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vavae_lib PUBLIC tandem_core nlohmann_json::nlohmann_json)
tandem_use_pch(vavae_lib)

# The program, in build/apps like the others (apps/CMakeLists.txt).
add_executable(vavae ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
target_link_libraries(vavae PRIVATE vavae_lib)
tandem_use_pch(vavae)
set_target_properties(vavae PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/apps)
