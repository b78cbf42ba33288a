/* spawn: run a command and report its whole-process figures, for bench/run.py.
 *
 *   spawn OUT COMMAND [ARG ...]
 *
 * Writes one line of key=value figures to the file OUT: wall_s (fork to reaping), user_s and sys_s
 * (CPU of the command and of every descendant it waited for), max_rss_kb (the largest resident set
 * of any one of those processes), exit (the command's exit status, or 128 + signal). Exits with the
 * command's status.
 *
 * Why a launcher of its own: Linux counts in a process's peak resident set the pages of the address
 * space it replaced at exec(), i.e. the parent's at fork(). A command started from Python (about 15 MB
 * resident) therefore never reports less than 15 MB, however small it is. Started from this program
 * (statically linked, a few hundred KB), the floor is this program's size, below any command measured.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: spawn OUT COMMAND [ARG ...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("spawn: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("spawn: exec");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("spawn: wait4");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = fopen(argv[1], "w");
    if (f == NULL) {
        perror("spawn: output file");
        return 2;
    }
    fprintf(f, "wall_s=%.6f user_s=%.6f sys_s=%.6f max_rss_kb=%ld exit=%d\n",
            (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, seconds(ru.ru_utime),
            seconds(ru.ru_stime), ru.ru_maxrss, code);
    fclose(f);
    return code;
}
