//! The examples at the end of each command's `--help` (and its man page): real command lines,
//! each checked by a test to be one fabcheck's own parser accepts. `-h` stays short without them.

pub const CHECK: &str = "\
Examples:
  fabcheck check                                   this node's checklist
  fabcheck check --expect rate=400 --expect mtu=4096
  fabcheck check --sysfs-root bundle/ --format json   a support bundle from another node
  fabcheck check --soak 10m                        judge the counters over a 10-minute window";

pub const BUNDLE: &str = "\
Examples:
  sudo fabcheck bundle /tmp/node07-bundle         capture this node (as root: config space, mlxconfig, mlxlink)
  fabcheck check --sysfs-root /tmp/node07-bundle  the checklist of the node captured, stamped with its host

The bundle holds host names, GUIDs, MACs and addresses: review it before you share it.
DIR/fabcheck-bundle.json says what was captured and what was not, and why.";

pub const PAIR: &str = "\
Examples:
  fabcheck pair node07 node08                      every test, ssh to both nodes
  fabcheck pair node07/mlx5_0 node08/mlx5_0 --tests write_bw -D 5s
  fabcheck pair node07 node08 -d mlx5_1 -a -s 1M --svg sweep.svg
  fabcheck pair tcp://10.0.0.7:18515 tcp://10.0.0.8:18515 --token-file ~/.fabcheck-token -R";

pub const MESH: &str = "\
Examples:
  fabcheck mesh --hostfile nodes.txt --html mesh.html
  fabcheck mesh n01 n02 n03 n04 --tests write_bw,send_lat -d mlx5_0
  fabcheck mesh --hostfile nodes.txt --pattern shift --rounds 8 --topology fabric.ibnd
  fabcheck mesh --hostfile nodes.txt --launcher srun --baseline last.json --json";

pub const COLLECTIVE: &str = "\
Examples:
  fabcheck collective --hostfile nodes.txt --op allreduce --rails all --size 256M
  fabcheck collective n01 n02 n03 n04 --op incast:3 --size 64M
  fabcheck collective --hostfile nodes.txt --op allreduce --topology fabric.ibnd --bisect";

pub const FABRIC: &str = "\
Examples:
  fabcheck fabric                                  the subnet seen from the first active port
  fabcheck fabric --topology cabling.ibnd --expect sm_standby=1
  fabcheck fabric --ca mlx5_0 --port 1 --soak 5m --format junit --output fabric.xml";

pub const EXPORTER: &str = "\
Examples:
  fabcheck exporter                                127.0.0.1:9879/metrics, a read every minute
  fabcheck exporter --listen 0.0.0.0:9879 --interval 5m";

pub const COMPARE: &str = "\
Examples:
  fabcheck compare last-week.json today.json
  fabcheck compare --regression 10 --json old.json new.json";

/// Every example line (the command line, without the comment after it), for the tests.
pub fn command_lines() -> Vec<Vec<String>> {
    [CHECK, PAIR, MESH, COLLECTIVE, FABRIC, EXPORTER, COMPARE]
        .iter()
        .flat_map(|text| text.lines().skip(1))
        .map(|line| {
            let command = line.trim().split("   ").next().unwrap_or_default();
            command.split_whitespace().map(str::to_string).collect()
        })
        .collect()
}
