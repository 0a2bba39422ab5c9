# NSA falsifiers read the bench shape list and workload (bench/nsa/shapes.h, workload.h).
target_include_directories(popper_contract_tests PRIVATE ${PROJECT_SOURCE_DIR}/bench)
