/* loadgen.c: the request client for the STATUS figures, in C so it is never the bottleneck.
 *
 *   loadgen SOCKET MODE K TOTAL WINDOW TIMEOUT_S VERB [FIELD...]
 *
 * MODE    daemon: say HELLO first, and an answer ends with a line "<tag> OK..." or
 *                 "<tag> ERR..." (PROTOCOL.md: data lines, then exactly one final line);
 *                 pushes ("* ...") and data lines are skipped.
 *         echo:   every line that comes back is one answer.
 * VERB, FIELD...  the request: every one is "t VERB FIELD...\n", each FIELD encoded as the
 *         protocol wants (wire.h; an option "key=value" is one FIELD). One fixed tag: answers
 *         come in request order, so the tag need not be unique.
 * K       requests per write(2) (1: sequential round trips; 100: pipelined).
 * TOTAL   requests to send (rounded up to whole writes).
 * WINDOW  writes in flight before waiting for their answers (1 with K=1 is one request, wait
 *         for the whole answer, repeat).
 *
 * Prints one line:  requests=N seconds=S rps=R rtt_median_us=M rtt_mean_us=A errors=E
 * (rtt_* are per write: time from the write to the last answer of that write).
 * Exits 2 if TIMEOUT_S passes first: the harness never hangs on a wedged server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "loadgen: timed out\n";
    write(2, msg, sizeof msg - 1);
    _exit(2);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char rbuf[1 << 20];
static size_t rlen;

/* Reads what is available (blocking once) and counts finished answers in it. */
static long read_answers(int fd, int daemon, long *errors) {
    ssize_t r = read(fd, rbuf + rlen, sizeof rbuf - rlen);
    if (r <= 0) {
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
        fprintf(stderr, "loadgen: connection closed by the server\n");
        exit(1);
    }
    rlen += (size_t)r;
    long done = 0;
    char *p = rbuf, *end = rbuf + rlen, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
        if (!daemon) {
            done++;
        } else if (p[0] == 't' && p[1] == ' ') {
            if (nl - p >= 4 && memcmp(p + 2, "OK", 2) == 0 && (p[4] == ' ' || p[4] == '\n' || p[4] == '\r')) done++;
            else if (nl - p >= 5 && memcmp(p + 2, "ERR", 3) == 0) { done++; (*errors)++; }
        }
        p = nl + 1;
    }
    rlen = (size_t)(end - p);
    memmove(rbuf, p, rlen);
    return done;
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: loadgen SOCKET daemon|echo K TOTAL WINDOW TIMEOUT_S VERB [FIELD...]\n");
        return 64;
    }
    const char *path = argv[1];
    int daemon = strcmp(argv[2], "daemon") == 0;
    long k = atol(argv[3]), total = atol(argv[4]), window = atol(argv[5]);
    size_t one;
    char *line = wire_request("t", argv[7], argv + 8, argc - 8, &one);
    if (!line) { perror("loadgen: malloc"); return 1; }
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    alarm((unsigned)atoi(argv[6]));

    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("loadgen: connect"); return 1; }

    long errors = 0;
    if (daemon) {   /* HELLO, answered before any measured request */
        const char *hello = "t HELLO proto=1 role=viewer name=loadgen\n";
        if (write(fd, hello, strlen(hello)) < 0) { perror("write"); return 1; }
        while (read_answers(fd, 1, &errors) == 0) {}
        if (errors) { fprintf(stderr, "loadgen: HELLO refused\n"); return 1; }
    }

    /* One write's worth of requests, built once. */
    char *batch = malloc(one * (size_t)k);
    for (long i = 0; i < k; i++) memcpy(batch + i * one, line, one);
    size_t blen = one * (size_t)k;

    long writes = (total + k - 1) / k;
    double *rtt = malloc(sizeof(double) * (size_t)writes);
    double *sent_at = malloc(sizeof(double) * (size_t)writes);
    long wsent = 0, answered = 0, wdone = 0;
    double t0 = now();
    while (wdone < writes) {
        /* Keep WINDOW writes in flight. A whole write is sent with blocking I/O: with
         * WINDOW*K requests in flight the answers fit in the socket buffers. */
        while (wsent < writes && wsent - wdone < window) {
            size_t off = 0;
            sent_at[wsent] = now();
            while (off < blen) {
                ssize_t w = write(fd, batch + off, blen - off);
                if (w < 0) { if (errno == EINTR) continue; perror("loadgen: write"); return 1; }
                off += (size_t)w;
            }
            wsent++;
        }
        answered += read_answers(fd, daemon, &errors);
        /* Answers come in order, so every K answers finish the oldest write. */
        while (wdone < wsent && answered >= (wdone + 1) * k) {
            rtt[wdone] = now() - sent_at[wdone];
            wdone++;
        }
    }
    double secs = now() - t0;
    double sum = 0;
    for (long i = 0; i < writes; i++) sum += rtt[i];
    qsort(rtt, (size_t)writes, sizeof(double), cmp_double);
    printf("requests=%ld seconds=%.6f rps=%.1f rtt_median_us=%.2f rtt_mean_us=%.2f errors=%ld\n",
           writes * k, secs, writes * k / secs, rtt[writes / 2] * 1e6, sum / writes * 1e6, errors);
    return 0;
}
