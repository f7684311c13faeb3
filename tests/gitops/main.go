// Command gitops-health asks the GitOps tools' own code what they make of objects,
// so the tests prove health with the real libraries rather than a re-implementation:
//
//   - kstatus: status.Compute from sigs.k8s.io/cli-utils (kubectl-style readiness,
//     kpt, Config Sync) and from Flux's fork github.com/fluxcd/cli-utils (what
//     Flux's kustomize-controller and helm-controller wait on);
//   - Argo CD: a health.lua run on github.com/yuin/gopher-lua the way Argo CD's
//     util/lua runs it (the same libraries opened, `obj` decoded the same way, a
//     1 s deadline, the returned table encoded with layeh.com/gopher-json and read
//     as {status, message}, a status outside Argo's set read as Unknown).
//
// Usage:
//
//	gitops-health compute [--lua health.lua]   < objects.json  (a JSON array)
//	gitops-health argocd-test DIR              (DIR/health.lua + DIR/health_test.yaml)
//
// `compute` prints a JSON array, one entry per object: {"kstatus": {...},
// "flux": {...}, "argocd": {...}}. `argocd-test` runs each case of Argo CD's
// health_test.yaml format as Argo CD's own TestLuaHealthScript does and prints one
// JSON line per case ({"inputPath", "want", "got"}); it exits 1 when any differs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	fluxstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	luajson "layeh.com/gopher-json"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// Result is one tool's verdict on one object.
type Result struct {
	Status     string      `json:"status"`
	Message    string      `json:"message"`
	Conditions []Condition `json:"conditions,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// Condition is a standard condition kstatus says belongs on the object.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Health is Argo CD's HealthStatus as its controller reads it from the script.
type Health struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// Argo CD's health status codes (gitops-engine pkg/health); any other is Unknown.
var argoStatuses = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true,
	"Healthy": true, "Degraded": true, "Missing": true,
}

const argoInvalidStatus = "Lua returned an invalid health status"

func main() {
	if len(os.Args) < 2 {
		fail("usage: gitops-health compute [--lua FILE] < objects.json | argocd-test DIR")
	}
	var err error
	switch os.Args[1] {
	case "compute":
		err = compute(os.Args[2:])
	case "argocd-test":
		err = argocdTest(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "gitops-health:", message)
	os.Exit(2)
}

func compute(args []string) error {
	flags := flag.NewFlagSet("compute", flag.ContinueOnError)
	luaPath := flags.String("lua", "", "Argo CD health.lua to run on each object")
	if err := flags.Parse(args); err != nil {
		return err
	}
	script := ""
	if *luaPath != "" {
		data, err := os.ReadFile(*luaPath)
		if err != nil {
			return err
		}
		script = string(data)
	}
	var objects []map[string]any
	decoder := json.NewDecoder(os.Stdin)
	if err := decoder.Decode(&objects); err != nil {
		return fmt.Errorf("stdin: a JSON array of objects: %w", err)
	}
	out := make([]map[string]any, 0, len(objects))
	for _, object := range objects {
		u, err := unstructuredOf(object)
		if err != nil {
			return err
		}
		entry := map[string]any{
			"kstatus": fromLibrary(kstatus.Compute(u)),
			"flux":    fromLibrary(fluxstatus.Compute(u)),
		}
		if script != "" {
			entry["argocd"] = fromLibrary(executeHealthLua(u.Object, script))
		}
		out = append(out, entry)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(out)
}

// unstructuredOf goes through JSON once more, as the tools' clients decode: integers
// become int64 (unstructured's decoder), which kstatus' NestedInt64 requires.
func unstructuredOf(object map[string]any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

// fromLibrary reads either fork's *status.Result (the same fields under two module paths)
// into ours, through JSON, whose field names match case-insensitively.
func fromLibrary(res any, err error) Result {
	if err != nil {
		return Result{Error: err.Error()}
	}
	data, err := json.Marshal(res)
	if err != nil {
		return Result{Error: err.Error()}
	}
	var result Result
	if err := json.Unmarshal(data, &result); err != nil {
		return Result{Error: err.Error()}
	}
	return result
}

// executeHealthLua is Argo CD's VM.ExecuteHealthLua with UseOpenLibs false (how the
// application controller runs a configured script): only the package, base and table
// libraries (Argo CD also opens a "safe" os library of its own, which this script does
// not use, so it is left out and a script that reached for it would fail here).
func executeHealthLua(object map[string]any, script string) (*Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decodeValue(l, object))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	returned := l.Get(-1)
	switch returned.Type() {
	case lua.LTNil:
		return &Health{}, nil
	case lua.LTTable:
	default:
		return nil, fmt.Errorf("expect table output from Lua script, not %s", returned.Type())
	}
	data, err := luajson.Encode(returned)
	if err != nil {
		return nil, err
	}
	health := &Health{}
	if err := json.Unmarshal(data, health); err != nil {
		var typeError *json.UnmarshalTypeError
		if errors.As(err, &typeError) { // Argo CD's test: an empty table encodes as []
			return &Health{}, nil
		}
		return nil, err
	}
	if !argoStatuses[health.Status] {
		return &Health{Status: "Unknown", Message: argoInvalidStatus}, nil
	}
	return health, nil
}

// decodeValue is Argo CD's (util/lua/lua.go), itself from layeh.com/gopher-json.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch converted := value.(type) {
	case bool:
		return lua.LBool(converted)
	case float64:
		return lua.LNumber(converted)
	case string:
		return lua.LString(converted)
	case json.Number:
		return lua.LString(converted)
	case int:
		return lua.LNumber(converted)
	case int32:
		return lua.LNumber(converted)
	case int64:
		return lua.LNumber(converted)
	case []any:
		arr := l.CreateTable(len(converted), 0)
		for _, item := range converted {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(converted))
		for key, item := range converted {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}

// testCases is Argo CD's health_test.yaml (util/lua/health_test.go's TestStructure).
type testCases struct {
	Tests []struct {
		InputPath    string `json:"inputPath"`
		HealthStatus Health `json:"healthStatus"`
	} `json:"tests"`
}

// argocdTest runs DIR's health_test.yaml as Argo CD's TestLuaHealthScript does: each
// input read with sigs.k8s.io/yaml into a map, the script run on it, the result
// compared whole with the expected healthStatus.
func argocdTest(args []string) error {
	if len(args) != 1 {
		return errors.New("argocd-test DIR")
	}
	dir := args[0]
	script, err := os.ReadFile(filepath.Join(dir, "health.lua"))
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
	if err != nil {
		return err
	}
	var cases testCases
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		return fmt.Errorf("health_test.yaml: %w", err)
	}
	if len(cases.Tests) == 0 {
		return errors.New("health_test.yaml: no tests")
	}
	failed := 0
	encoder := json.NewEncoder(os.Stdout)
	for _, test := range cases.Tests {
		raw, err := os.ReadFile(filepath.Join(dir, test.InputPath))
		if err != nil {
			return err
		}
		object := map[string]any{}
		if err := yaml.Unmarshal(raw, &object); err != nil {
			return fmt.Errorf("%s: %w", test.InputPath, err)
		}
		line := map[string]any{"inputPath": test.InputPath, "want": test.HealthStatus}
		got, err := executeHealthLua(object, string(script))
		if err != nil {
			line["error"] = err.Error()
			failed++
		} else {
			line["got"] = got
			if !reflect.DeepEqual(*got, test.HealthStatus) {
				failed++
			}
		}
		if err := encoder.Encode(line); err != nil {
			return err
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "gitops-health: %d of %d health_test.yaml cases differ\n", failed, len(cases.Tests))
		os.Exit(1)
	}
	return nil
}
