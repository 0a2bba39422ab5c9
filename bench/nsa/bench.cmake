# bench_nsa shares the testbed (workloads, reference comparison, derived bound) with falsify/nsa.
target_include_directories(bench_nsa PRIVATE ${PROJECT_SOURCE_DIR}/falsify)
