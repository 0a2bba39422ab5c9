# libtorch as the training step's peer (impl/train/torch/): POPPER_TORCH = AUTO | ON | OFF.
# Found -> POPPER_HAVE_TORCH: impl/train/impl.cmake builds libpopper_train_torch.so,
# which the train bench's ceiling links and FALSIFY-TRAIN-006 dlopens
# (`requires: [libtorch]`). Not found -> both report skipped with
# POPPER_TORCH_MISSING as the reason. Debian's libtorch-dev (1.13) is what
# scripts/install-deps.sh installs. Sanitizer builds leave it out: libtorch is
# not instrumented.
set(POPPER_TORCH "AUTO" CACHE STRING "AUTO | ON | OFF: the libtorch peer of the training step")
set_property(CACHE POPPER_TORCH PROPERTY STRINGS AUTO ON OFF)
set(POPPER_HAVE_TORCH OFF)
set(POPPER_TORCH_MISSING "libtorch was not found when CMake configured popper (apt-get install libtorch-dev)")
if(POPPER_SANITIZE)
  set(POPPER_TORCH_MISSING "libtorch is left out of sanitizer builds (it is not instrumented)")
elseif(POPPER_TORCH STREQUAL "OFF")
  set(POPPER_TORCH_MISSING "POPPER_TORCH=OFF when CMake configured popper")
else()
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(POPPER_HAVE_TORCH ON)
    message(STATUS "popper: libtorch ${Torch_VERSION}: the train family's peer tier and gradient oracle")
  elseif(POPPER_TORCH STREQUAL "ON")
    message(FATAL_ERROR "POPPER_TORCH=ON but libtorch was not found (apt-get install libtorch-dev)")
  endif()
endif()
if(NOT POPPER_HAVE_TORCH)
  message(STATUS "popper: no libtorch peer: ${POPPER_TORCH_MISSING}")
endif()
