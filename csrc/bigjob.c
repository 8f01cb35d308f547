/*
 * The "big job" of the 4.2BSD paper's exec tests: 250 KiB of initialized data, then exit(0).
 * "250 here is intended to approximate vi's text+data size" (Appendix A).
 */
#include "job.h"

__attribute__((used)) char space[1024 * 250] = "force into data segment";

JOB_BODY(space)
