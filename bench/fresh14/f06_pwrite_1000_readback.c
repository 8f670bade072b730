/* Records of 1,000 B (not page-aligned) written rank-interleaved to a shared file, 8,192 per rank, then,
   after a barrier, each rank preads back its right neighbour's 8,192 records, 1,000 B each. */
#include <mpi.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#define REC 1000
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int fd = open(argv[1], O_CREAT | O_RDWR, 0644);
    char buf[REC]; memset(buf, 'a' + rank, sizeof buf);
    for (int i = 0; i < 8192; i++)
        if (pwrite(fd, buf, REC, ((off_t)i * size + rank) * REC) != REC) return 1;
    MPI_Barrier(MPI_COMM_WORLD);
    int other = (rank + 1) % size;
    for (int i = 0; i < 8192; i++)
        if (pread(fd, buf, REC, ((off_t)i * size + other) * REC) != REC) return 1;
    close(fd);
    MPI_Finalize();
    return 0;
}
