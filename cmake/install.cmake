# Install rules, the CMake package (lockwireConfig.cmake), pkg-config files and CPack (.deb).
# Kept in one place so the layers' CMakeLists.txt only declare their targets.
#
# Installed libraries (static unless BUILD_SHARED_LIBS=ON) and their exported names:
#   lockwire_resp -> lockwire::resp    lockwire_loop -> lockwire::loop    lockwire_uv -> lockwire::uv
#   lockwire_lock_protocol -> lockwire::lock_protocol (part of lockwire::lock)
#   lockwire_lock -> lockwire::lock    lockwire_lock_blocking -> lockwire::blocking
#   lockwire_sim -> lockwire::sim (simulator + test harness)
#   lockwire::lockwire: everything a service links (lock, blocking, uv, loop, resp), not sim.
# Shared builds keep the default symbol visibility: hiding it needs an export macro on every
# public class and function of four layers, which is not done yet.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(lockwire_libs lockwire_resp lockwire_loop lockwire_uv lockwire_lock_protocol lockwire_lock
                  lockwire_lock_blocking lockwire_sim)
set(lockwire_export_names resp loop uv lock_protocol lock blocking sim)

foreach(lib name IN ZIP_LISTS lockwire_libs lockwire_export_names)
  if(NOT TARGET ${lib})
    message(FATAL_ERROR "install.cmake: target ${lib} is missing")
  endif()
  # The layers name their source include folders; consumers of the installed tree see only
  # <prefix>/include (so no source path leaks into the exported targets).
  get_target_property(dirs ${lib} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  if(NOT dirs)
    set(dirs "")
  endif()
  foreach(d IN LISTS dirs)
    list(APPEND wrapped "$<BUILD_INTERFACE:${d}>")
  endforeach()
  list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}"
                                          EXPORT_NAME ${name}
                                          VERSION ${PROJECT_VERSION}
                                          SOVERSION ${PROJECT_VERSION_MAJOR})
  if(BUILD_SHARED_LIBS)  # each library finds the others beside it (relocatable)
    set_target_properties(${lib} PROPERTIES INSTALL_RPATH "$ORIGIN")
  endif()
  if(NOT TARGET lockwire::${name})
    add_library(lockwire::${name} ALIAS ${lib})
  endif()
endforeach()

add_library(lockwire_all INTERFACE)
set_target_properties(lockwire_all PROPERTIES EXPORT_NAME lockwire)
target_link_libraries(lockwire_all INTERFACE lockwire_lock_blocking lockwire_lock lockwire_uv
                                             lockwire_loop lockwire_resp)
add_library(lockwire::lockwire ALIAS lockwire_all)

install(TARGETS ${lockwire_libs} lockwire_all EXPORT lockwireTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        # Shared builds: the tools need the .so.N at run time; the .so link is for developers.
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tools
                NAMELINK_COMPONENT dev)
foreach(dir resp loop lock sim)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          COMPONENT dev FILES_MATCHING PATTERN "*.hpp")
endforeach()

set(lockwire_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/lockwire)
install(EXPORT lockwireTargets NAMESPACE lockwire:: DESTINATION ${lockwire_cmakedir}
        COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lockwireConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/lockwireConfig.cmake
                              INSTALL_DESTINATION ${lockwire_cmakedir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lockwireConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lockwireConfig.cmake
              ${PROJECT_BINARY_DIR}/lockwireConfigVersion.cmake
        DESTINATION ${lockwire_cmakedir} COMPONENT dev)

# pkg-config: prefix is found from the .pc file's own place, so the tree can be moved.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "install.cmake: CMAKE_INSTALL_LIBDIR must be relative for lockwire.pc")
endif()
string(REGEX REPLACE "[^/]+" ".." lockwire_pc_up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(pc lockwire lockwire-sim)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT dev)
endforeach()

# The command-line tools and their manual pages (docs/man; tests/package checks them against
# each tool's --help).
if(BUILD_SHARED_LIBS)
  set_target_properties(lockwire lockwire-sim respcat PROPERTIES
                        INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
install(TARGETS lockwire lockwire-sim respcat RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT tools)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/lockwire.1 ${PROJECT_SOURCE_DIR}/docs/man/lockwire-sim.1
              ${PROJECT_SOURCE_DIR}/docs/man/respcat.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)

# CPack: two Debian packages, lockwire (tools, man pages) and lockwire-dev (headers, libraries,
# CMake package, .pc files). dpkg-shlibdeps computes the tools' Depends (libuv1, libssl3, ...).
set(CPACK_PACKAGE_NAME lockwire)
set(CPACK_PACKAGE_VENDOR "lockwire")
set(CPACK_PACKAGE_CONTACT "lockwire developers <noreply@invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Distributed locks on Redis (C++20), with a deterministic simulator")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL tools dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME lockwire)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME lockwire-dev)
# Static libraries carry their dependencies: a consumer links libuv and OpenSSL itself.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libuv1-dev (>= 1.44), libssl-dev (>= 3.0), pkg-config")
if(BUILD_SHARED_LIBS)  # the .so.N files are in the lockwire package
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", lockwire (= ${PROJECT_VERSION})")
endif()
include(CPack)
