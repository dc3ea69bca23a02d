/* observers.c: many idle-but-alive observing clients, for the 1,000-observer figure.
 *
 *   observers SOCKET N DIR
 *
 * Opens N connections to the daemon, each sending HELLO and OBSERVE DIR (encoded as every
 * field, wire.h), and waits until every OBSERVE was answered; then prints "ready" and reads
 * (and drops) everything the daemon pushes, with epoll, until stdin closes or SIGTERM. On exit
 * prints "lines=L resets=R closed=C" on stdout. It is in C so that draining N sockets costs
 * little and the latency measured by the harness's sample clients is the daemon's, not ours.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "wire.h"

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

struct cl { int fd; int ready; char part[64]; size_t plen; };

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: observers SOCKET N DIR\n"); return 64; }
    int n = atoi(argv[2]);
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    alarm(60);   /* connecting must not take a minute; cancelled once ready */
    int ep = epoll_create1(0);
    struct cl *cls = calloc((size_t)n, sizeof *cls);
    size_t olen;
    char *observe = wire_request("o", "OBSERVE", &argv[3], 1, &olen);
    const char hello[] = "h HELLO proto=1 role=viewer name=bench-observer\n";
    char *req = malloc(sizeof hello + olen);
    if (!observe || !req) { perror("observers: malloc"); return 1; }
    int rl = snprintf(req, sizeof hello + olen, "%s%s", hello, observe);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0) { perror("observers: socket (ulimit -n?)"); return 1; }
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[1]);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("observers: connect"); return 1; }
        if (write(fd, req, (size_t)rl) != rl) { perror("observers: write"); return 1; }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        cls[i].fd = fd;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &cls[i] };
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    struct epoll_event ev0 = { .events = EPOLLIN, .data.ptr = NULL };
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev0);   /* stdin: EOF means stop */
    long lines = 0, resets = 0, closed = 0;
    int ready = 0, announced = 0;
    static char buf[1 << 16];
    struct epoll_event evs[256];
    while (!stop) {
        if (!announced && ready == n) { printf("ready\n"); fflush(stdout); announced = 1; alarm(0); }
        int m = epoll_wait(ep, evs, 256, 1000);
        if (m < 0) { if (errno == EINTR) continue; break; }
        for (int i = 0; i < m; i++) {
            struct cl *c = evs[i].data.ptr;
            if (!c) { if (read(0, buf, sizeof buf) <= 0) stop = 1; continue; }
            for (;;) {
                ssize_t r = read(c->fd, buf, sizeof buf);
                if (r < 0) break;   /* EAGAIN */
                if (r == 0) { closed++; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); close(c->fd); break; }
                /* Count lines; look at the start of each line for "o OK" (ready) and "* RESET". */
                char *p = buf, *end = buf + r;
                while (p < end) {
                    char *nl = memchr(p, '\n', (size_t)(end - p));
                    size_t take = (size_t)((nl ? nl : end) - p);
                    size_t room = sizeof c->part - 1 - c->plen;
                    memcpy(c->part + c->plen, p, take < room ? take : room);
                    c->plen += take < room ? take : room;
                    if (!nl) break;
                    c->part[c->plen] = 0;
                    lines++;
                    if (!c->ready && strncmp(c->part, "o OK", 4) == 0) { c->ready = 1; ready++; }
                    if (strncmp(c->part, "o ERR", 5) == 0) { fprintf(stderr, "observers: %s\n", c->part); return 1; }
                    if (strncmp(c->part, "* RESET", 7) == 0) resets++;
                    c->plen = 0;
                    p = nl + 1;
                }
            }
        }
    }
    printf("lines=%ld resets=%ld closed=%ld\n", lines, resets, closed);
    return 0;
}
