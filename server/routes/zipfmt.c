/* zipfmt.c -- the bytes of stored ZIP archives (zipfmt.h): CRC-32 sliced
 * by 8, little-endian fields, the header fields local and central headers
 * share.
 *
 * Threads: any. The CRC tables are filled once, under pthread_once, and
 * only read after.
 */
#include <pthread.h>

#include "zipfmt.h"

/* ---- CRC-32, slicing by 8 ----------------------------------------------- */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_tab[t][i] = crc_tab[t - 1][i] >> 8 ^
                            crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

uint32_t tv_crc32(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    for (; n >= 8; b += 8, n -= 8) {
        uint32_t lo = crc ^ le32(b), hi = le32(b + 4);
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][lo >> 8 & 0xff] ^
              crc_tab[5][lo >> 16 & 0xff] ^ crc_tab[4][lo >> 24] ^
              crc_tab[3][hi & 0xff] ^ crc_tab[2][hi >> 8 & 0xff] ^
              crc_tab[1][hi >> 16 & 0xff] ^ crc_tab[0][hi >> 24];
    }
    while (n--)
        crc = crc_tab[0][(crc ^ *b++) & 0xff] ^ crc >> 8;
    return ~crc;
}

/* ---- header fields ------------------------------------------------------ */

unsigned char *tv_zip_le16(unsigned char *o, unsigned v)
{
    o[0] = (unsigned char)v;
    o[1] = (unsigned char)(v >> 8);
    return o + 2;
}

unsigned char *tv_zip_le32(unsigned char *o, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        o[i] = (unsigned char)(v >> 8 * i);
    return o + 4;
}

unsigned char *tv_zip_common(unsigned char *o, uint32_t crc, size_t len,
                             size_t name_len)
{
    o = tv_zip_le16(o, 20);
    o = tv_zip_le16(o, 0);
    o = tv_zip_le16(o, 0);
    o = tv_zip_le16(o, 0);
    o = tv_zip_le16(o, 0x21);
    o = tv_zip_le32(o, crc);
    o = tv_zip_le32(o, (uint32_t)len);
    o = tv_zip_le32(o, (uint32_t)len);
    return tv_zip_le16(o, (unsigned)name_len);
}
