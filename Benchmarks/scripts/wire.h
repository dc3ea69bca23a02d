/* wire.h: the field encoding of the wire protocol (PROTOCOL.md "Framing"), for the C helpers.
 *
 * The same as the daemon's Sources/SyncBadgeProtocol/PercentEncoding.swift, byte for byte: the
 * bytes 0x00-0x20, '%', 0x7F and every byte that is not part of a valid UTF-8 sequence
 * (overlong forms, surrogates and code points past U+10FFFF are not valid) are written %XX in
 * upper-case hex; all other bytes as they are. Checked against Tests/Vectors/wire.tsv by
 * Clients/python/tests/test_c_wire.py. Header only: `#include "wire.h"`.
 */
#ifndef SYNCBADGE_WIRE_H
#define SYNCBADGE_WIRE_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence starting at s[i] (a byte >= 0x80), or 0 if invalid. */
static inline size_t wire_utf8_len(const unsigned char *s, size_t n, size_t i) {
#define WIRE_CONT(k, lo, hi) ((k) < n && s[k] >= (lo) && s[k] <= (hi))
    unsigned char b = s[i];
    if (b >= 0xC2 && b <= 0xDF)
        return WIRE_CONT(i + 1, 0x80, 0xBF) ? 2 : 0;
    if (b == 0xE0)
        return WIRE_CONT(i + 1, 0xA0, 0xBF) && WIRE_CONT(i + 2, 0x80, 0xBF) ? 3 : 0;
    if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
        return WIRE_CONT(i + 1, 0x80, 0xBF) && WIRE_CONT(i + 2, 0x80, 0xBF) ? 3 : 0;
    if (b == 0xED)
        return WIRE_CONT(i + 1, 0x80, 0x9F) && WIRE_CONT(i + 2, 0x80, 0xBF) ? 3 : 0;
    if (b == 0xF0)
        return WIRE_CONT(i + 1, 0x90, 0xBF) && WIRE_CONT(i + 2, 0x80, 0xBF) && WIRE_CONT(i + 3, 0x80, 0xBF) ? 4 : 0;
    if (b >= 0xF1 && b <= 0xF3)
        return WIRE_CONT(i + 1, 0x80, 0xBF) && WIRE_CONT(i + 2, 0x80, 0xBF) && WIRE_CONT(i + 3, 0x80, 0xBF) ? 4 : 0;
    if (b == 0xF4)
        return WIRE_CONT(i + 1, 0x80, 0x8F) && WIRE_CONT(i + 2, 0x80, 0xBF) && WIRE_CONT(i + 3, 0x80, 0xBF) ? 4 : 0;
    return 0;
#undef WIRE_CONT
}

/* Writes the encoded form of in[0..n) to out, which has room for 3 * n bytes; returns the
 * number of bytes written (no NUL is added). */
static inline size_t wire_encode(const unsigned char *in, size_t n, char *out) {
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned char b = in[i];
        size_t len = b < 0x80 ? (b <= 0x20 || b == 0x25 || b == 0x7F ? 0 : 1) : wire_utf8_len(in, n, i);
        if (len == 0) {
            out[o++] = '%';
            out[o++] = hex[b >> 4];
            out[o++] = hex[b & 0x0F];
            i++;
        } else {
            memcpy(out + o, in + i, len);
            o += len;
            i += len;
        }
    }
    return o;
}

/* A request line "<tag> <verb> <field>...\n" with every field encoded (an option "key=value"
 * passes as one field: its key never needs an escape), in memory from malloc; NULL if out of
 * memory. *len receives its length. */
static inline char *wire_request(const char *tag, const char *verb, char *const *fields, int nfields, size_t *len) {
    size_t cap = strlen(tag) + strlen(verb) + 3;
    for (int i = 0; i < nfields; i++) cap += 3 * strlen(fields[i]) + 1;
    char *line = malloc(cap);
    *len = 0;
    if (!line) return NULL;
    size_t o = (size_t)sprintf(line, "%s %s", tag, verb);
    for (int i = 0; i < nfields; i++) {
        line[o++] = ' ';
        o += wire_encode((const unsigned char *)fields[i], strlen(fields[i]), line + o);
    }
    line[o++] = '\n';
    line[o] = 0;
    *len = o;
    return line;
}

#endif
