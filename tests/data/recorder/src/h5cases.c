/* HDF5 cases for review8: mode = ckpt | ckptcoll | chunked | collbig */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = argv[1], *path = argv[2];
  int coll = !strcmp(mode, "ckptcoll") || !strcmp(mode, "chunked") || !strcmp(mode, "collbig");
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
  if (!strcmp(mode, "ckptcoll")) { H5Pset_all_coll_metadata_ops(fapl, 1); H5Pset_coll_metadata_write(fapl, 1); }
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (coll) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (!strncmp(mode, "ckpt", 4)) {
    int n = 128; double buf[128]; int nsteps = getenv("STEPS") ? atoi(getenv("STEPS")) : 5, nds = getenv("NDSETS") ? atoi(getenv("NDSETS")) : 20; for (int i = 0; i < n; i++) buf[i] = rank + i;
    for (int step = 0; step < nsteps; step++) {
      char g[32]; snprintf(g, sizeof g, "/step%d", step);
      hid_t grp = H5Gcreate(f, g, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      for (int d = 0; d < nds; d++) {
        char name[32]; snprintf(name, sizeof name, "var%02d", d);
        hsize_t dims = (hsize_t)n * size, off = (hsize_t)n * rank, cnt = n;
        hid_t fs = H5Screate_simple(1, &dims, NULL);
        hid_t ds = H5Dcreate(grp, name, H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        for (int a = 0; a < 3; a++) {
          char an[16]; snprintf(an, sizeof an, "attr%d", a); double v = step * 10 + a;
          hid_t as = H5Screate(H5S_SCALAR);
          hid_t at = H5Acreate(ds, an, H5T_NATIVE_DOUBLE, as, H5P_DEFAULT, H5P_DEFAULT);
          H5Awrite(at, H5T_NATIVE_DOUBLE, &v); H5Aclose(at); H5Sclose(as);
        }
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &cnt, NULL);
        hid_t ms = H5Screate_simple(1, &cnt, NULL);
        H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf);
        H5Sclose(ms); H5Sclose(fs); H5Dclose(ds);
      }
      H5Gclose(grp);
      H5Fflush(f, H5F_SCOPE_GLOBAL);
    }
  } else if (!strcmp(mode, "chunked")) {
    hsize_t dims[2] = {256 * (hsize_t)size, 256}, ch[2] = {64, 64};
    hid_t fs = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    hid_t ds = H5Dcreate(f, "field", H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    double *buf = malloc(256 * 256 * sizeof(double)); for (int i = 0; i < 256 * 256; i++) buf[i] = i;
    for (int step = 0; step < 4; step++) {
      hsize_t off[2] = {256 * (hsize_t)rank, 0}, cnt[2] = {256, 256};
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL);
      hid_t ms = H5Screate_simple(2, cnt, NULL);
      H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf); H5Sclose(ms);
    }
    H5Dclose(ds); H5Pclose(dcpl); H5Sclose(fs); free(buf);
  } else { /* collbig */
    hsize_t n = 512 * 1024, dims = n * size, off = n * rank;
    hid_t fs = H5Screate_simple(1, &dims, NULL);
    hid_t ds = H5Dcreate(f, "big", H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double *buf = malloc(n * sizeof(double)); for (hsize_t i = 0; i < n; i++) buf[i] = i;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &n, NULL);
    hid_t ms = H5Screate_simple(1, &n, NULL);
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf);
    H5Sclose(ms); H5Dclose(ds); H5Sclose(fs); free(buf);
  }
  H5Fclose(f); H5Pclose(fapl); H5Pclose(dxpl);
  MPI_Finalize(); return 0;
}
