# attn's CMake package, installed by `make install` into PREFIX/lib/cmake/attn/:
# find_package(attn) gives the imported target attn::attn, the static library
# with its headers (included as "attention/...", "nn/...", as in the
# repository), C++20 and threads. The prefix is found from where this file is.
get_filename_component(_attn_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
include(CMakeFindDependencyMacro)
find_dependency(Threads)
if(NOT TARGET attn::attn)
  add_library(attn::attn STATIC IMPORTED)
  set_target_properties(attn::attn PROPERTIES
    IMPORTED_LOCATION "${_attn_prefix}/lib/libattn.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_attn_prefix}/include/attn"
    INTERFACE_COMPILE_FEATURES cxx_std_20
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
unset(_attn_prefix)
