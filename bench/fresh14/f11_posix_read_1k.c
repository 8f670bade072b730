/* Data written earlier, read in small pieces: each rank writes its own 4 MiB file in 1 MiB requests,
   closes it, reopens it read-only and reads it in 4,096 reads of 1 KiB. */
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512]; snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    char *big = malloc(1 << 20); memset(big, 'a' + rank, 1 << 20);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 4; i++) if (write(fd, big, 1 << 20) != 1 << 20) return 1;
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    char buf[1024];
    fd = open(path, O_RDONLY);
    for (int i = 0; i < 4096; i++) if (read(fd, buf, sizeof buf) != sizeof buf) return 1;
    close(fd);
    free(big);
    MPI_Finalize();
    return 0;
}
