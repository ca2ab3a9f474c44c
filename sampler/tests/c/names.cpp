// C++ names as perf report shows them (tests/names.rs): a member function
// of a class template with an integer argument, Accum<32ul>::sum, and a
// static member function with a long signature, ns::Worker::make. Two
// thirds of the time and more in the first, the rest in the second.
// Exits 0.
#include <cstdio>
#include <string>
#include <vector>

volatile unsigned long sink;

template <unsigned long N> struct Accum {
    __attribute__((noinline)) unsigned long sum(unsigned long x) {
        for (unsigned long i = 0; i < N * 1000000; i++) sink += i ^ x;
        return sink;
    }
};

namespace ns {
struct Worker {
    __attribute__((noinline)) static std::vector<int> make(const std::string &s, int n) {
        std::vector<int> v;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 10000; j++) sink += j;
            v.push_back((int)s.size());
        }
        return v;
    }
};
} // namespace ns

int main() {
    Accum<32ul> a;
    unsigned long r = 0;
    for (int k = 0; k < 12; k++) r += a.sum(k);
    auto v = ns::Worker::make("hello", 12000);
    std::printf("%lu %zu\n", r, v.size());
    return 0;
}
