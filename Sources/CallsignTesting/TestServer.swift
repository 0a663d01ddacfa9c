import Callsign
