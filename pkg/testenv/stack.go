package testenv

// StackBinaries are the four binaries of a whole stack (the gateway and the three backing
// services) by the names `make build` gives them, for a test package that runs the stack as
// processes: `var bins = testenv.StackBinaries()` and `func TestMain(m *testing.M) {
// bins.Main(m) }`.
func StackBinaries() *Binaries {
	return &Binaries{Pkgs: map[string]string{
		"gateway":    "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
		"ocean":      "github.com/sensorgate/sensorgate/services/cmd/ocean",
		"weather":    "github.com/sensorgate/sensorgate/services/cmd/weather",
		"airquality": "github.com/sensorgate/sensorgate/services/cmd/airquality",
	}}
}
