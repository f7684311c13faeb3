// Command etcd is upstream etcd's server entry point, built from the
// go.etcd.io/etcd/server/v3 module so the test control plane needs no
// prebuilt binary. It adds nothing: etcdmain.Main is what the official
// etcd binary runs.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
