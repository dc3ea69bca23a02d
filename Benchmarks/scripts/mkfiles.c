/* mkfiles.c: creates file trees fast (Python would spend minutes on a million files).
 *
 *   mkfiles tree DIR TOP SUB FILES   DIR holds TOP directories each holding SUB directories;
 *                                    every directory (DIR too) holds FILES empty files:
 *                                    1 + TOP*(1+SUB) directories. Existing entries are kept,
 *                                    so a tree is reused when it is already there.
 *   mkfiles flat DIR N               creates N empty files DIR/f0..f(N-1) in a tight loop
 *                                    (open(O_CREAT)+close): the "burst" figure.
 *   mkfiles append DIR N             appends a byte to each of DIR/f0..f(N-1), which exist
 *                                    (open(O_APPEND)+write+close, a save): "write-burst".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void files_in(const char *dir, int n) {
    char p[4096];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/file%02d.txt", dir, i);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        if (fd < 0) { perror(p); exit(1); }
        close(fd);
    }
}

static void mkdir_ok(const char *p) {
    if (mkdir(p, 0755) < 0 && errno != EEXIST) { perror(p); exit(1); }
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "tree") == 0) {
        const char *root = argv[2];
        int top = atoi(argv[3]), sub = atoi(argv[4]), files = atoi(argv[5]);
        char a[4096], b[8192];
        mkdir_ok(root);
        files_in(root, files);
        for (int i = 0; i < top; i++) {
            snprintf(a, sizeof a, "%s/d%04d", root, i);
            mkdir_ok(a);
            files_in(a, files);
            for (int j = 0; j < sub; j++) {
                snprintf(b, sizeof b, "%s/s%04d", a, j);
                mkdir_ok(b);
                files_in(b, files);
            }
        }
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "flat") == 0) {
        char p[4096];
        int n = atoi(argv[3]);
        for (int i = 0; i < n; i++) {
            snprintf(p, sizeof p, "%s/f%d", argv[2], i);
            int fd = open(p, O_CREAT | O_WRONLY, 0644);
            if (fd < 0) { perror(p); return 1; }
            close(fd);
        }
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "append") == 0) {
        char p[4096];
        int n = atoi(argv[3]);
        for (int i = 0; i < n; i++) {
            snprintf(p, sizeof p, "%s/f%d", argv[2], i);
            int fd = open(p, O_WRONLY | O_APPEND);
            if (fd < 0 || write(fd, "x", 1) != 1) { perror(p); return 1; }
            close(fd);
        }
        return 0;
    }
    fprintf(stderr, "usage: mkfiles tree DIR TOP SUB FILES | mkfiles flat DIR N | mkfiles append DIR N\n");
    return 64;
}
