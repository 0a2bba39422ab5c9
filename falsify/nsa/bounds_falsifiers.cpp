// No out-of-bounds read for any span layout (contracts/nsa/nsa-selection-v1.yaml:
// KANI-NSA-001). Q, K and V of one sequence are placed flush against a
// PROT_NONE guard page, once at the end and once at the start of their
// mapping, so reading one key past (or before) the sequence faults at once
// in every build; the fault is turned into a test failure (siglongjmp out of
// the SIGSEGV handler). The ASan build runs the same enumeration.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "impl/nsa/nsa.hpp"
#include "nsa/testbed.hpp"
#include "popper/binding.hpp"

namespace {

using namespace popper::nsa;
namespace tb = popper::nsa::testbed;

// n elements flush against a guard page after (at_end) or before them; guard pages on both sides.
class GuardedBuffer {
 public:
  GuardedBuffer(std::size_t n, bool at_end) {
    page_ = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t bytes = n * sizeof(bf16), data_pages = (bytes + page_ - 1) / page_ + 1;
    size_ = (data_pages + 2) * page_;
    void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<char*>(m);
    ::mprotect(base_, page_, PROT_NONE);
    ::mprotect(base_ + size_ - page_, page_, PROT_NONE);
    char* first = base_ + page_;
    char* last = base_ + size_ - page_;
    data_ = reinterpret_cast<bf16*>(at_end ? last - bytes : first);
    n_ = n;
  }
  ~GuardedBuffer() { ::munmap(base_, size_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  std::span<bf16> span() { return {data_, n_}; }

 private:
  std::size_t page_ = 0, size_ = 0, n_ = 0;
  char* base_ = nullptr;
  bf16* data_ = nullptr;
};

sigjmp_buf g_jump;
volatile sig_atomic_t g_armed = 0;

void on_fault(int sig, siginfo_t*, void*) {
  if (g_armed) siglongjmp(g_jump, 1);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installs the handler for its lifetime; ran(f) is false when f faulted.
class FaultTrap {
 public:
  FaultTrap() {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &old_segv_);
    ::sigaction(SIGBUS, &sa, &old_bus_);
  }
  ~FaultTrap() {
    ::sigaction(SIGSEGV, &old_segv_, nullptr);
    ::sigaction(SIGBUS, &old_bus_, nullptr);
  }
  template <class F>
  bool ran(F&& f) {
    if (sigsetjmp(g_jump, 1) == 0) {
      g_armed = 1;
      f();
      g_armed = 0;
      return true;
    }
    g_armed = 0;
    return false;
  }

 private:
  struct sigaction old_segv_ {
  }, old_bus_{};
};

}  // namespace

POPPER_HARNESS("KANI-NSA-001", [](const popper::Params& p) {
  const int bound = static_cast<int>(p.bound()), hg = static_cast<int>(p.integer("heads_per_group"));
  const bool forced = popper::forced_paths_allowed();
  FaultTrap trap;
  long cases = 0;
  for (const auto d : p.integers("d"))
    for (int groups = 1; groups <= 2; ++groups)
      for (int nk = 0; nk <= bound; ++nk)
        for (const bool at_end : {true, false}) {
          const HeadLayout lay{groups * hg, groups, int(d), int(d)};
          const int nq = nk > 0 ? 1 : 0;
          GuardedBuffer q(static_cast<std::size_t>(nq) * lay.heads * lay.dim, at_end);
          GuardedBuffer k(static_cast<std::size_t>(nk) * groups * lay.dim, at_end);
          GuardedBuffer v(static_cast<std::size_t>(nk) * groups * lay.dim_v, at_end);
          const auto fill = [](std::span<bf16> dst, std::uint64_t seed) {
            const auto src = tb::bf16_uniform(dst.size(), seed);
            std::copy(src.begin(), src.end(), dst.begin());
          };
          fill(q.span(), 1);
          fill(k.span(), 2);
          fill(v.span(), 3);
          const std::vector<std::int32_t> cu_q{0, nq}, cu_k{0, nk};
          const VarlenBatch batch{cu_q, cu_k};
          // Every subset of [0, nk), once as maximal runs and once as single-token spans; group 1 gets the complement.
          for (int mask = 0; mask < (1 << nk); ++mask)
            for (const bool split : {false, true}) {
              std::vector<std::int64_t> offsets{0};
              std::vector<Span> spans;
              for (int g = 0; g < groups * nq; ++g) {
                const int m = g == 0 ? mask : ~mask;
                for (int j = 0; j < nk; ++j) {
                  if (!(m >> j & 1)) continue;
                  if (!split && !spans.empty() && spans.size() > static_cast<std::size_t>(offsets.back()) &&
                      spans.back().end == j)
                    spans.back().end = j + 1;
                  else spans.push_back({j, j + 1});
                }
                offsets.push_back(static_cast<std::int64_t>(spans.size()));
              }
              const SpanPack pack = pack_explicit_spans(batch, groups, offsets, spans);
              const SelectionProblem pr{lay, batch, &pack, q.span(), k.span(), v.span()};
              std::vector<float> o(static_cast<std::size_t>(nq) * lay.heads * lay.dim_v),
                  lse(static_cast<std::size_t>(nq) * lay.heads);
              auto check = [&](const std::string& who, auto run) {
                ++cases;
                const bool ok = trap.ran([&] { run(pr, SelectionOutput{o, lse}); });
                ASSERT_TRUE(ok) << who << ": memory fault (read outside the sequence) with n_k " << nk << ", G "
                                << groups << ", D " << d << ", token mask " << mask
                                << (split ? " as single tokens" : " as runs") << ", data flush against the guard page "
                                << (at_end ? "after" : "before") << " it";
                const auto acc = tb::compare(pr, o, lse, tb::spread_rows(nq, nq), 2.0);
                ASSERT_TRUE(acc.within_bound) << who << " n_k " << nk << " mask " << mask << ": " << acc.describe();
              };
              for (const auto& path : tb::hand_paths(1, forced))
                check(std::string("hand ") + popper::cpu::to_string(path.options.isa),
                      [&](const SelectionProblem& x, SelectionOutput out) {
                        popper::record_backend(selection_attention_hand(x, out, path.options).backend,
                                               path.forced ? popper::Dispatch::Forced : popper::Dispatch::Auto);
                      });
              check("fallback", [&](const SelectionProblem& x, SelectionOutput out) {
                popper::record_backend(selection_attention_fallback(x, out).backend);
              });
            }
        }
  std::printf("  %ld guarded kernel calls\n", cases);
});
