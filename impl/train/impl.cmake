# impl/train: the budget file is JSON (nlohmann, header-only, as the harness reads it).
foreach(t IN LISTS POPPER_IMPL_LIBRARIES)
  target_link_libraries(${t} PRIVATE nlohmann_json::nlohmann_json)
endforeach()
# AdamW's sqrt vectorises only without errno semantics (it is never called on a negative number).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/adamw.cpp PROPERTIES COMPILE_OPTIONS "-fno-math-errno")

# The libtorch peer (cmake/PopperTorch.cmake decides whether it is built), in
# <build>/bin beside the programs that load it.
if(POPPER_HAVE_TORCH)
  add_library(popper_train_torch SHARED ${CMAKE_CURRENT_LIST_DIR}/torch/lib_torch.cpp)
  target_include_directories(popper_train_torch PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(popper_train_torch PRIVATE ${TORCH_LIBRARIES} PkgConfig::OPENBLAS)
  set_target_properties(popper_train_torch PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endif()
