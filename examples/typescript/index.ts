// The project's entry point. Pulumi calls the exported function and turns the object it
// returns into the stack's outputs; tests import the same function from ./cluster.
import { talosCluster } from "./cluster";

export = talosCluster;
