/* zipfmt.h -- the byte-level pieces of the stored ZIP archives tokvec
 * writes (torch.save's archive in torchsave.c, the .npz answer in npz.c):
 * CRC-32, little-endian fields, and the fields a local and a central
 * header share. Each writer lays out its own archive; these only spell
 * the bytes, so the two cannot drift apart.
 *
 * Pure functions; any thread (the CRC tables are filled once, under
 * pthread_once, and only read after).
 */
#ifndef TV_ZIPFMT_H
#define TV_ZIPFMT_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 (ISO-HDLC: zip, gzip, PNG) of n bytes, continued from crc (0 to
 * start). */
uint32_t tv_crc32(uint32_t crc, const void *p, size_t n);

/* v little endian at o; returns o + 2 (o + 4). */
unsigned char *tv_zip_le16(unsigned char *o, unsigned v);
unsigned char *tv_zip_le32(unsigned char *o, uint32_t v);

/* The fields a local and a central header share, from "version needed to
 * extract": 2.0, no flags, stored, 00:00 on 1980-01-01 (DOS date 0x21),
 * crc, both sizes (len), the name's length. Returns the end. */
unsigned char *tv_zip_common(unsigned char *o, uint32_t crc, size_t len,
                             size_t name_len);

#endif
