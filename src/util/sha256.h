/*
 * SHA-256 (FIPS 180-4): the JIT cache's keys and the checksums of cached
 * objects. Incremental (init / update / final) plus one-shot helpers.
 */
#ifndef TEX_UTIL_SHA256_H
#define TEX_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;      /* bytes hashed so far */
    uint8_t block[64]; /* pending input */
    size_t used;       /* bytes in block */
} texi_sha256;

void texi_sha256_init(texi_sha256 *s);
void texi_sha256_update(texi_sha256 *s, const void *data, size_t n);
void texi_sha256_final(texi_sha256 *s, uint8_t digest[32]);

/* The digest as 64 lowercase hex digits and a NUL. */
void texi_sha256_hex(const uint8_t digest[32], char hex[65]);

/* One shot: hex digest of n bytes. */
void texi_sha256_hex_of(const void *data, size_t n, char hex[65]);

#endif
