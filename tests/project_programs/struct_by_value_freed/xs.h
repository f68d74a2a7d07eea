// XSBench's SimulationData: the device buffers of a simulation, moved to the GPU by a function that
// returns the struct by value (GridInit.cu's move_simulation_data_to_device).
#pragma once

struct SimulationData {
  int *num_nucs;
  double *concs;
  int *mats;
  double *unionized_energy_array;
  int *index_grid;
  double *nuclide_grid;
  unsigned long *verification;
  int n;
};

SimulationData move_to_device(SimulationData SD);
