// Exceptions thrown and caught in a loop (tests/names.rs): most of the
// time goes to the unwinder in libgcc_s, whose file has no .symtab, only
// the exported functions of its .dynsym (_Unwind_Find_FDE...). Exits 0.
#include <cstdio>
#include <stdexcept>

volatile int sink;

__attribute__((noinline)) void thrower(int i) {
    if (i >= 0) throw std::runtime_error("x");
    sink++;
}

int main() {
    int caught = 0;
    for (int i = 0; i < 200000; i++) {
        try {
            thrower(i);
        } catch (const std::exception &) {
            caught++;
        }
    }
    std::printf("%d\n", caught);
    return 0;
}
