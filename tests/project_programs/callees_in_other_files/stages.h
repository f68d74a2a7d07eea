// The stages of a dwt2d-style pipeline: defined in stages.cu and scale.cu, called from host.cu.
#pragma once

void run_stage(float *a, float *scratch, int n);
void run_other(float *b, int n);
void scale_rows(float *b, int n);
