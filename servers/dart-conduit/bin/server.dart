// Conduit (conduit_core), started the way `conduit create` projects do.
import 'dart:io';

import 'package:conduit_core/conduit_core.dart' show Application;
import 'package:fairbench_dart_conduit/channel.dart';
import 'package:fairbench_dart_conduit/fairbench.dart';
import 'package:fairbench_dart_conduit/study.dart';

// Conduit spawns and supervises its own isolates, so runServer does not.
// RESPONSE=study runs the code the study published instead (lib/study.dart).
Future<void> main(List<String> args) => studyRequested
    ? serveStudy()
    : runServer(args, start, spawnIsolates: false);

Future<Stop> start(Config config) async {
  final app = Application<FairbenchChannel>()
    // Conduit's default is InternetAddress.anyIPv4: IPv4 only.
    ..options.address = InternetAddress.anyIPv6
    ..options.isIpv6Only = false
    ..options.port = config.port
    ..options.context.addAll(config.toMap());
  if (config.training) {
    // The training run of `dart compile jit-snapshot` must stay in this
    // isolate and exit when done.
    await app.startOnCurrentIsolate();
  } else {
    // numberOfInstances isolates, each with its own channel, each binding
    // with shared: true; this isolate only supervises them.
    await app.start(numberOfInstances: config.cores);
  }
  return app.stop;
}
