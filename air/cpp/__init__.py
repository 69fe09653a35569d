"""The C++ toolchain: detection, CMake, build, ctest, cppcheck, clangd, DiagnosticParser (SDD §15)."""
