/* File-event generators for the reliability suite, in C so that the writer is not
 * slowed by (or slowing) the Python harness's interpreter, and its rate is honest.
 *
 *   storm write ROOT NDIRS NFILES RATE SEED   rewrite/create ROOT/dNN/fNNNNN at RATE ops/s
 *                                             until SIGTERM; prints "ops=N secs=S"
 *   storm create DIR N                        create DIR/fNNNNN, N files, as fast as possible
 *   storm cycles DIR N NAMELEN RATE           N create+delete cycles of long-named files,
 *                                             RATE cycles/s (0: as fast as possible)
 *   storm churn DIR NOPS RATE SEED            create/modify/delete/re-create files and
 *                                             directories under DIR; prints "ops=N"
 *
 * Content written by `write` has a per-write counter and a random length, so every write
 * produces new content (the harness hashes what the engine acknowledged).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag = 0;
static void on_term(int sig) { (void)sig; stop_flag = 1; }

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Paces op number k of a run that started at t0 to `rate` per second (0: no pacing). */
static void pace(double t0, long k, double rate) {
    if (rate <= 0) return;
    double due = t0 + k / rate, wait = due - mono();
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static int write_file(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    ssize_t n = write(fd, data, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

static int cmd_write(char **argv) {
    const char *root = argv[0];
    int ndirs = atoi(argv[1]), nfiles = atoi(argv[2]);
    double rate = atof(argv[3]);
    srandom((unsigned)atol(argv[4]));
    signal(SIGTERM, on_term);
    long *counter = calloc(nfiles, sizeof(long));
    char path[4096], buf[512];
    double t0 = mono();
    long ops = 0;
    while (!stop_flag) {
        pace(t0, ops, rate);
        int i = random() % nfiles;
        snprintf(path, sizeof path, "%s/d%02d/f%05d", root, i % ndirs, i);
        int len = snprintf(buf, sizeof buf, "%d:%ld:", i, ++counter[i]);
        int pad = random() % 300;
        for (int j = 0; j < pad && len < (int)sizeof buf - 1; j++) buf[len++] = 'a' + random() % 26;
        if (write_file(path, buf, len) != 0 && errno != ENOENT) { perror(path); return 1; }
        ops++;
    }
    printf("ops=%ld secs=%.3f\n", ops, mono() - t0);
    return 0;
}

static int cmd_create(char **argv) {
    const char *dir = argv[0];
    int n = atoi(argv[1]);
    char path[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/f%05d", dir, i);
        if (write_file(path, "x", 1) != 0) { perror(path); return 1; }
    }
    printf("created=%d\n", n);
    return 0;
}

static int cmd_cycles(char **argv) {
    const char *dir = argv[0];
    int n = atoi(argv[1]), namelen = atoi(argv[2]);
    double rate = atof(argv[3]), t0 = mono();
    char name[256], path[4096];
    if (namelen > 200) namelen = 200;
    memset(name, 'n', namelen);
    name[namelen] = 0;
    for (int i = 0; i < n && !stop_flag; i++) {
        pace(t0, i, rate);
        snprintf(path, sizeof path, "%s/%s%06d", dir, name, i % 50);
        if (write_file(path, "x", 1) != 0) { perror(path); return 1; }
        if (unlink(path) != 0) { perror(path); return 1; }
    }
    printf("cycles=%d\n", n);
    return 0;
}

/* Removes a directory with its (flat) files. */
static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static int cmd_churn(char **argv) {
    const char *dir = argv[0];
    long nops = atol(argv[1]);
    double rate = atof(argv[2]);
    srandom((unsigned)atol(argv[3]));
    signal(SIGTERM, on_term);
    char path[4096], path2[4096], buf[128];
    double t0 = mono();
    long ops = 0;
    while (ops < nops && !stop_flag) {
        pace(t0, ops, rate);
        int r = random() % 100, f = random() % 200, d = random() % 20;
        if (r < 40) {                       /* create or modify a file */
            snprintf(path, sizeof path, "%s/f%03d", dir, f);
            int len = snprintf(buf, sizeof buf, "%ld", ops);
            write_file(path, buf, len);
            ops++;
        } else if (r < 65) {                /* delete a file */
            snprintf(path, sizeof path, "%s/f%03d", dir, f);
            unlink(path);
            ops++;
        } else if (r < 75) {                /* rename a file */
            snprintf(path, sizeof path, "%s/f%03d", dir, f);
            snprintf(path2, sizeof path2, "%s/f%03d", dir, (int)(random() % 200));
            rename(path, path2);
            ops++;
        } else if (r < 87) {                /* a directory with three files in it */
            snprintf(path, sizeof path, "%s/d%02d", dir, d);
            mkdir(path, 0755);
            for (int i = 0; i < 3; i++) {
                snprintf(path2, sizeof path2, "%s/d%02d/g%d", dir, d, i);
                write_file(path2, "y", 1);
            }
            ops += 4;
        } else {                            /* the directory goes again */
            snprintf(path, sizeof path, "%s/d%02d", dir, d);
            rm_dir(path);
            ops += 4;
        }
    }
    printf("ops=%ld secs=%.3f\n", ops, mono() - t0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 7 && !strcmp(argv[1], "write")) return cmd_write(argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "create")) return cmd_create(argv + 2);
    if (argc >= 6 && !strcmp(argv[1], "cycles")) return cmd_cycles(argv + 2);
    if (argc >= 6 && !strcmp(argv[1], "churn")) return cmd_churn(argv + 2);
    fprintf(stderr, "usage: see the comment at the top of storm.c\n");
    return 64;
}
