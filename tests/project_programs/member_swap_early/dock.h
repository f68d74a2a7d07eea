// miniMDock's GPU data: two conformation buffers that trade places every generation.
#pragma once

struct GpuData {
  float *conformations_current;
  float *conformations_next;
  float *energies;
};

void setup(GpuData *p, int n);
void run_generations(GpuData *p, int n, int generations);
void teardown(GpuData *p);
