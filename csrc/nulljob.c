/* The "null job" of the 4.2BSD paper's exec tests: 1 KiB of initialized data, then exit(0). */
#include "job.h"

__attribute__((used)) char space[1024] = "force into data segment";

JOB_BODY(space)
