# Sourced by bundle.sh and bundle-check.sh: the libraries a machine brings
# itself and a bundle must not carry (the C runtime, the compiler's, the CUDA
# driver's and toolkit's: a GPU machine has them, at the versions its driver needs).
system_lib() {
  case "$(basename "$1")" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libresolv.so*|libutil.so*) return 0 ;;
    libstdc++.so*|libgcc_s.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libnvidia-*|libnvrtc*) return 0 ;;
  esac
  return 1
}
