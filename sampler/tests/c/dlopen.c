/* Sleeps 0.3 s, then dlopens argv[1] and spins 0.6 s in its lib_spin(). */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv) {
    struct timespec d = {0, 300000000};
    if (argc < 2) return 2;
    nanosleep(&d, 0);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    void (*f)(double) = (void (*)(double))dlsym(h, "lib_spin");
    if (!f) return 1;
    f(0.6);
    return 0;
}
