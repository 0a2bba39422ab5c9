# The data a popper program reads at run time (contracts, test corpora, the NSA
# router's config, the bench families' descriptors and the committed
# baselines), where popper/runtime_paths.hpp looks for it: <build>/share/popper.
# A build tree links each folder to the source tree (edits show at once, no
# copy to go stale); `make bundle` and an install copy them. Nothing else
# tells a binary where its sources are.
set(POPPER_RUNTIME_DATA contracts tests config bench baselines)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/share/popper)
foreach(_popper_data IN LISTS POPPER_RUNTIME_DATA)
  set(_popper_link ${PROJECT_BINARY_DIR}/share/popper/${_popper_data})
  if(NOT IS_SYMLINK ${_popper_link})
    file(REMOVE_RECURSE ${_popper_link})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${_popper_data} ${_popper_link} SYMBOLIC)
  endif()
endforeach()
