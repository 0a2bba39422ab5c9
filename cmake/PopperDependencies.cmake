# Every third-party dependency, from Debian packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(GTest REQUIRED)
find_package(rapidcheck REQUIRED)
find_package(benchmark REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(LAPACKE REQUIRED IMPORTED_TARGET lapacke)

# yaml-cpp 0.7 exports the target as 'yaml-cpp'; later versions as 'yaml-cpp::yaml-cpp'.
if(TARGET yaml-cpp::yaml-cpp)
  set(POPPER_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(POPPER_YAML_TARGET yaml-cpp)
endif()
include(PopperVulkan)  # POPPER_HAVE_VULKAN: GLSL compute shaders -> SPIR-V (glslc), loader opened at run time
include(PopperGgml)    # POPPER_HAVE_GGML: llama.cpp (ggml) packages as Q4_K oracle and q4k ceiling
