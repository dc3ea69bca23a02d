/* echo.c: the baseline server for the STATUS figures.
 *
 * A single-threaded epoll server on a Unix stream socket that sends every complete line
 * back to the client that sent it, unchanged. It does the least any line server must do
 * (read, find the line ends, write), so "syncbadged vs echo" isolates the daemon's own
 * cost per request from the kernel's cost of moving bytes over a Unix socket.
 *
 *   echo SOCKET_PATH        runs until killed; prints "ready" on stdout once listening
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

#define BUF (256 * 1024)

struct conn {
    int fd;
    char in[BUF];
    size_t inlen;   /* bytes read that are not yet echoed (a partial line at most) */
    char *out;      /* bytes to echo that the socket did not take yet */
    size_t outlen, outcap;
};

static void die(const char *what) { perror(what); exit(1); }

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* Queue-or-write: try to write directly, keep what the socket would not take. */
static int send_bytes(struct conn *c, const char *p, size_t n) {
    if (c->outlen == 0) {
        while (n > 0) {
            ssize_t w = write(c->fd, p, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN) break;
                return -1;
            }
            p += w; n -= (size_t)w;
        }
    }
    if (n > 0) {
        if (c->outlen + n > c->outcap) {
            c->outcap = (c->outlen + n) * 2;
            c->out = realloc(c->out, c->outcap);
            if (!c->out) die("realloc");
        }
        memcpy(c->out + c->outlen, p, n);
        c->outlen += n;
    }
    return 0;
}

static int flush_out(struct conn *c) {
    size_t off = 0;
    while (off < c->outlen) {
        ssize_t w = write(c->fd, c->out + off, c->outlen - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) break;
            return -1;
        }
        off += (size_t)w;
    }
    memmove(c->out, c->out + off, c->outlen - off);
    c->outlen -= off;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: echo SOCKET_PATH\n"); return 64; }
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    if (ls < 0) die("socket");
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[1]);
    unlink(argv[1]);
    if (bind(ls, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
    if (listen(ls, 1024) < 0) die("listen");
    set_nonblock(ls);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    printf("ready\n");
    fflush(stdout);
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {   /* the listening socket */
                int fd;
                while ((fd = accept(ls, NULL, NULL)) >= 0) {
                    set_nonblock(fd);
                    c = calloc(1, sizeof *c);
                    c->fd = fd;
                    struct epoll_event cev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c };
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            int dead = 0;
            if (evs[i].events & EPOLLOUT) dead |= flush_out(c) < 0;
            /* Edge-triggered: read until EAGAIN. */
            while (!dead && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                ssize_t r = read(c->fd, c->in + c->inlen, BUF - c->inlen);
                if (r < 0) { if (errno == EINTR) continue; if (errno != EAGAIN) dead = 1; break; }
                if (r == 0) { dead = 1; break; }
                c->inlen += (size_t)r;
                /* Echo every complete line; keep a trailing partial line. */
                char *last = memrchr(c->in, '\n', c->inlen);
                if (last) {
                    size_t upto = (size_t)(last - c->in) + 1;
                    if (send_bytes(c, c->in, upto) < 0) { dead = 1; break; }
                    memmove(c->in, c->in + upto, c->inlen - upto);
                    c->inlen -= upto;
                } else if (c->inlen == BUF) {
                    dead = 1;   /* a line longer than the buffer: not our protocol */
                }
            }
            if (dead) {
                close(c->fd);
                free(c->out);
                free(c);
            }
        }
    }
}
