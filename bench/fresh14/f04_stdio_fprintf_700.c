/* A CSV writer: each rank fprintf's 6,000 rows of 64 numbers (about 700 B a row) to its own file. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512]; snprintf(path, sizeof path, "%s.%d.csv", argv[1], rank);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 6000; i++) {
        fprintf(f, "%d,%d,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,"
                   "%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,"
                   "%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,"
                   "%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e,%.4e\n", i, rank,
                i * 1.0, i * 1.1, i * 1.2, i * 1.3, i * 1.4, i * 1.5, i * 1.6, i * 1.7, i * 1.8, i * 1.9,
                i * 2.0, i * 2.1, i * 2.2, i * 2.3, i * 2.4, i * 2.5, i * 2.6, i * 2.7, i * 2.8, i * 2.9,
                i * 3.0, i * 3.1, i * 3.2, i * 3.3, i * 3.4, i * 3.5, i * 3.6, i * 3.7, i * 3.8, i * 3.9,
                i * 4.0, i * 4.1, i * 4.2, i * 4.3, i * 4.4, i * 4.5, i * 4.6, i * 4.7, i * 4.8, i * 4.9,
                i * 5.0, i * 5.1, i * 5.2, i * 5.3, i * 5.4, i * 5.5, i * 5.6, i * 5.7, i * 5.8, i * 5.9,
                i * 6.0, i * 6.1, i * 6.2, i * 6.3, i * 6.4, i * 6.5, i * 6.6, i * 6.7, i * 6.8, i * 6.9,
                i * 7.0, i * 7.1);
    }
    fclose(f);
    MPI_Finalize();
    return 0;
}
