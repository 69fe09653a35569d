"""The C++ toolchain: detection, CMake, build, ctest, cppcheck, clangd and the
DiagnosticParser (SDD §15)."""
