# One precompiled LibTorch header (<torch/torch.h>), built for tandem_core and
# reused by every app, test and bench: parsing it is most of the compile time
# of a translation unit that uses LibTorch. Loading it is not free either
# (LibTorch 2.x's is about 700 MB, several seconds per file), so files that do
# not reach LibTorch through their #includes, following the project's own
# headers, compile without it.
# Where quoted includes resolve: libcore's headers and each app's folder.
file(GLOB _tandem_app_dirs LIST_DIRECTORIES true ${CMAKE_SOURCE_DIR}/apps/*)
list(FILTER _tandem_app_dirs EXCLUDE REGEX "\\.txt$")
set(TANDEM_PCH_ROOTS ${CMAKE_SOURCE_DIR}/libcore/include ${_tandem_app_dirs})

# Sets `out` to ON when `file` includes a LibTorch header, directly or through
# project headers; the answer per file is kept in a global property.
function(_tandem_reaches_torch file out)
  get_property(known GLOBAL PROPERTY "tandem_torch:${file}" SET)
  if(NOT known)
    set_property(GLOBAL PROPERTY "tandem_torch:${file}" OFF)  # an include cycle ends here
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    get_filename_component(dir "${file}" DIRECTORY)
    set(result OFF)
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" name "${line}")
      if(name MATCHES "^(torch|ATen|c10)/")
        set(result ON)
        break()
      endif()
      foreach(root IN ITEMS "${dir}" LISTS TANDEM_PCH_ROOTS)
        get_filename_component(candidate "${root}/${name}" ABSOLUTE)
        if(EXISTS "${candidate}" AND NOT IS_DIRECTORY "${candidate}")
          _tandem_reaches_torch("${candidate}" inner)
          if(inner)
            set(result ON)
          endif()
          break()
        endif()
      endforeach()
      if(result)
        break()
      endif()
    endforeach()
    set_property(GLOBAL PROPERTY "tandem_torch:${file}" ${result})
  endif()
  get_property(value GLOBAL PROPERTY "tandem_torch:${file}")
  set(${out} ${value} PARENT_SCOPE)
endfunction()

# Marks the sources of `target` that never reach LibTorch to compile without
# the precompiled header. Called from the directory that defines `target`.
function(_tandem_skip_pch_without_torch target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    if(path MATCHES "\\.(cpp|cc|cxx)$")
      _tandem_reaches_torch("${path}" torch)
      if(NOT torch)
        set_source_files_properties("${source}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endif()
  endforeach()
endfunction()

function(tandem_pch target)
  target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  _tandem_skip_pch_without_torch(${target})
endfunction()

# Every other target reuses tandem_core's precompiled header.
function(tandem_use_pch target)
  target_precompile_headers(${target} REUSE_FROM tandem_core)
  _tandem_skip_pch_without_torch(${target})
endfunction()
