/* Forks; the child execs argv[1] with argument 0.4; the parent waits and
 * exits with the child's status. */
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    pid_t p = fork();
    if (p == 0) {
        execl(argv[1], argv[1], "0.4", (char *)0);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
