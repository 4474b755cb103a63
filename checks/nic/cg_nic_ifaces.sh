#!/bin/sh
# Pins each MPI rank to a network interface, then runs the program.
#   CG_NIC_IFACE_MAP="0:fab0 1:fab1"  interface(s) of the listed ranks
#   CG_NIC_IFACE_DEFAULT="fab0,fab1"  interface(s) of every other rank
# (for OpenMPI's TCP BTL: btl_tcp_if_include is read at MPI_Init, per
# process, so ranks of one job may use different interfaces; under its UCX
# PML, UCX_NET_DEVICES likewise, set where the interconnect set it). The rank comes
# from the launcher: PMIX_RANK (srun --mpi=pmix, mpirun), OMPI_COMM_WORLD_RANK
# (mpirun), PMI_RANK (hydra) or SLURM_PROCID.
rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ]; then
    echo "CG_ERROR kind=setup cg_nic_ifaces.sh: no rank in the environment" >&2
    exit 2
fi
ifaces=${CG_NIC_IFACE_DEFAULT:-}
for pair in ${CG_NIC_IFACE_MAP:-}; do
    if [ "${pair%%:*}" = "$rank" ]; then
        ifaces=${pair#*:}
    fi
done
if [ -n "$ifaces" ]; then
    OMPI_MCA_btl_tcp_if_include=$ifaces
    export OMPI_MCA_btl_tcp_if_include
    if [ -n "${UCX_NET_DEVICES:-}" ]; then
        UCX_NET_DEVICES=$ifaces
        export UCX_NET_DEVICES
    fi
fi
exec "$@"
