# HDR compute nodes
rate = 200
width = 4X
speed: HDR
link_layer = infiniband
mtu = 4096
devices = 8
fw = 20.39.1002
state = ACTIVE
