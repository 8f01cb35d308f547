/* Feder (BLTJ 1984) Table III row 8, "Exec 8K BSS": a program whose only data is 8 KiB of BSS
 * (zero-filled at exec, no bytes in the file), then exit(0). */
#include "job.h"

__attribute__((used)) char space[8192];

JOB_BODY(space)
